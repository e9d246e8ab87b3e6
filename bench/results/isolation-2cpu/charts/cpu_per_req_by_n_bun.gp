# CPU-us per request vs pool size (saturating)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/isolation-2cpu/charts/cpu_per_req_by_n_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$s0 << EOD
1 21
EOD
$s1 << EOD
1 71
1 71
EOD
set title "CPU-us per request vs pool size (saturating)"
set xlabel "pool size N"
set ylabel "CPU-us / request"
set yrange [0:*]
set xtics (1)
plot $s0 using 1:2 with linespoints lw 2 pt 7 title "default policy", \
     $s1 using 1:2 with linespoints lw 2 pt 7 title "inline"
