# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 9.99
"t1" 5
"t2" 8.68
"a1" 5.55
"a2" 8.75
"m2" 9.47
"auto1" 5.29
"nginx" 0.58
EOD
$rate << EOD
# label "/ping p99"
"inline" 0.8
"t1" 0.34
"t2" 0.71
"a1" 0.63
"a2" 0.58
"m2" 0.95
"auto1" 0.31
"nginx" 0.22
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
