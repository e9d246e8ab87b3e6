# knit and the peers: saturating rps, fixed-rate cores
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default/charts/peers_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "total rps"
"inline" 17607
"threads: 1" 72013
"threads: 2" 55218
"auto: 1" 65543
"asio: 1" 72092
"asio: 2" 52549
"multi: 2" 17677
EOD
$cores << EOD
# label "server cores"
"inline" 0.85
"threads: 1" 0.91
"threads: 2" 0.89
"auto: 1" 0.91
"asio: 1" 0.9
"asio: 2" 0.88
"multi: 2" 0.9
EOD
set multiplot layout 2,1
set style fill solid 0.6
set boxwidth 0.7
set yrange [0:*]
set xtics rotate by -30
unset key
set title "Saturating total rps (median)"
set ylabel "requests/s"
plot $rps using 2:xtic(1) with boxes notitle
set title "Server cores at the fixed rate (same work, median)"
set ylabel "cores"
plot $cores using 2:xtic(1) with boxes notitle
unset multiplot
