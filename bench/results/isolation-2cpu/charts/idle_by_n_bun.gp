# Idle cores vs pool size, per timer policy
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/isolation-2cpu/charts/idle_by_n_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$s0 << EOD
1 0
EOD
$model << EOD
1 0.047619047619047616
EOD
set title "Idle cores vs pool size, per timer policy"
set xlabel "pool size N"
set ylabel "cores with no load"
set yrange [0:*]
set xtics (1)
plot $s0 using 1:2 with linespoints lw 2 pt 7 title "default policy", \
     $model using 1:2 with lines dt 2 lw 2 title "model N*spin/(spin+park), old default"
