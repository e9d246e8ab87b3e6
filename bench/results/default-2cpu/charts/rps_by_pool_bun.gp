# Saturating rps per route vs pool size (seed policy)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104049/charts/rps_by_pool_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 6318.88 4277.25 4277
"1" 72236.88 3250 3249.25
"2" 47096.38 4024.88 4020.62
"4" 34369.12 4810.75 4789.12
EOD
set title "Saturating load: rps per route vs pool size (seed policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
