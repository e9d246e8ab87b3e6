# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-100911/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 11.3
"t1" 5.13
"t2" 8.49
"t4" 9.08
"t2old" 8.68
"t4old" 11.44
EOD
$rate << EOD
# label "/ping p99"
"inline" 4.83
"t1" 1.45
"t2" 1.48
"t4" 3.73
"t2old" 2.38
"t4old" 7.88
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
