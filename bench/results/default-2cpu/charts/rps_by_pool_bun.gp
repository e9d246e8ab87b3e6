# Saturating rps per route vs pool size (seed policy)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-100911/charts/rps_by_pool_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 7135.75 4770.75 4768.75
"1" 75560.5 3243.75 3237.62
"2" 48558.38 4171.75 4160
"4" 30215.75 4633.75 4638.88
EOD
set title "Saturating load: rps per route vs pool size (seed policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
