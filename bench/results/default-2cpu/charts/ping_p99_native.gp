# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-100911/charts/ping_p99_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 1.91
"t1" 5
"t2" 1.7
"t4" 2.11
"t2old" 5.1
"t4old" 5.49
EOD
$rate << EOD
# label "/ping p99"
"inline" 0.58
"t1" 4.14
"t2" 4.9
"t4" 2.71
"t2old" 1.56
"t4old" 5.72
EOD
set multiplot layout 2,1
set style fill solid 0.6
set boxwidth 0.7
set ylabel "ms"
set yrange [0:*]
set xtics rotate by -30
unset key
set title "/ping p99 per configuration, saturating"
plot $sat using 2:xtic(1) with boxes fill solid 0.6 notitle
set title "/ping p99 per configuration, fixed rate"
plot $rate using 2:xtic(1) with boxes fill solid 0.6 notitle
unset multiplot
