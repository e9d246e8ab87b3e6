# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104049/charts/ping_p99_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 1.75
"t1" 4.57
"t2" 1.75
"t4" 1.72
"t2old" 2.73
"t4old" 5.85
EOD
$rate << EOD
# label "/ping p99"
"inline" 9.73
"t1" 3.43
"t2" 4.04
"t4" 3.71
"t2old" 3.01
"t4old" 13.34
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
