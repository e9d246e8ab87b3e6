# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/fleet-2cpu/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"t1" 9.215
EOD
$rate << EOD
# label "/ping p99"
"t1" 3.795
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
