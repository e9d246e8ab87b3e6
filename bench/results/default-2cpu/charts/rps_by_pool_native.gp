# Saturating rps per route vs pool size (seed policy)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-100911/charts/rps_by_pool_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 45113.62 30459.38 30450.12
"1" 67726.25 10907.62 10910.5
"2" 64924.12 31959 31960.62
"4" 58191 29639.38 29631.5
EOD
set title "Saturating load: rps per route vs pool size (seed policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
