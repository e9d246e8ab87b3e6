# CPU-us per request vs pool size (saturating)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104049/charts/cpu_per_req_by_n_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$s0 << EOD
1 13
2 18
4 23
EOD
$s1 << EOD
2 16
4 21
EOD
$s2 << EOD
1 61
4 61
EOD
set title "CPU-us per request vs pool size (saturating)"
set xlabel "pool size N"
set ylabel "CPU-us / request"
set yrange [0:*]
set xtics (1, 2, 4)
plot $s0 using 1:2 with linespoints lw 2 pt 7 title "seed policy", \
     $s1 using 1:2 with linespoints lw 2 pt 7 title "old default (N*50us, park 1ms)", \
     $s2 using 1:2 with linespoints lw 2 pt 7 title "inline"
