# Saturating rps per route vs pool size (seed policy)
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default/charts/rps_by_pool_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 7543.75 5032.25 5031.25
"1" 65514.88 3250.25 3250
"2" 47212.5 3993.5 3994.62
EOD
set title "Saturating load: rps per route vs pool size (seed policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
