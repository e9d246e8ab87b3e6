# Saturating rps per route vs pool size (seed policy)
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104049/charts/rps_by_pool_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$d << EOD
# label "/ping" "/ssr" "/jwt"
"inline" 56105.88 38125.62 38134.25
"1" 73299 12849.25 12850.12
"2" 60253.88 30757.62 30759.88
"4" 61157.75 31182 31189.12
EOD
set title "Saturating load: rps per route vs pool size (seed policy)"
set xlabel "pool size"
set ylabel "requests/s"
set yrange [0:*]
plot $d using 0:2:xtic(1) with linespoints lw 2 pt 7 title "/ping", \
     $d using 0:3 with linespoints lw 2 pt 7 title "/ssr", \
     $d using 0:4 with linespoints lw 2 pt 7 title "/jwt"
