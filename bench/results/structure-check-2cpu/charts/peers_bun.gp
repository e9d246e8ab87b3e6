# knit and the peers: saturating rps, fixed-rate cores
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default14/charts/peers_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "total rps"
"inline" 18100
"threads: 1" 70950
"threads: 2" 55189
"auto: 1" 72774
"asio: 1" 72478
"asio: 2" 53644
"multi: 2" 17387
"peer: before-t1" 72344
"peer: before-a1" 70224
EOD
$cores << EOD
# label "server cores"
"inline" 0.86
"threads: 1" 0.94
"threads: 2" 0.91
"auto: 1" 0.92
"asio: 1" 0.92
"asio: 2" 0.87
"multi: 2" 0.91
"peer: before-t1" 0.92
"peer: before-a1" 0.91
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
