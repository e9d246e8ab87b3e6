# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/default14/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 9.47
"t1" 5.65
"t2" 8.62
"a1" 5.39
"a2" 8.75
"m2" 9.67
"auto1" 5.26
"before-t1" 4.87
"before-a1" 5.39
EOD
$rate << EOD
# label "/ping p99"
"inline" 1.72
"t1" 0.82
"t2" 0.83
"a1" 1.5
"a2" 1.85
"m2" 1.44
"auto1" 0.52
"before-t1" 1.31
"before-a1" 1.22
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
