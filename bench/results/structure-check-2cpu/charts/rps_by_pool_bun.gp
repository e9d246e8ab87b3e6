# Saturating rps per route vs pool size (default policy)
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default14/charts/rps_by_pool_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 7756.25 5175 5169
"1" 64448.62 3251.38 3250
"2" 47213.88 3994.25 3989.5
EOD
set title "Saturating load: rps per route vs pool size (default policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
