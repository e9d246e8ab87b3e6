# /ping p99 per configuration
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/isolation-2cpu/charts/ping_p99_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$sat << EOD
# label "/ping p99"
"inline" 25.62
"thread-t1" 6.31
"process-t1" 6.77
EOD
$rate << EOD
# label "/ping p99"
"inline" 30.34
"thread-t1" 16.42
"process-t1" 10.65
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
