# Saturating rps per route vs pool size (default policy)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/isolation-2cpu/charts/rps_by_pool_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 5549.3 3821.03 3812.67
"1" 41528.63 3218.7 3218.33
EOD
set title "Saturating load: rps per route vs pool size (default policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
