# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104049/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 22.22
"t1" 5.49
"t2" 8.68
"t4" 8.49
"t2old" 8.42
"t4old" 9.86
EOD
$rate << EOD
# label "/ping p99"
"inline" 1.54
"t1" 1.58
"t2" 3.42
"t4" 3.76
"t2old" 2.63
"t4old" 1.79
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
