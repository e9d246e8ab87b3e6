# knit and the peers: saturating rps, fixed-rate cores
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/hosts-sweep-small-2cpu/charts/peers_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "total rps"
"inline" 14324
"threads: 1" 44292.5
"asio: 1" 44849.5
EOD
set multiplot layout 1,1
set style fill solid 0.6
set boxwidth 0.7
set yrange [0:*]
set xtics rotate by -30
unset key
set title "Saturating total rps (median)"
set ylabel "requests/s"
plot $rps using 2:xtic(1) with boxes notitle
unset multiplot
