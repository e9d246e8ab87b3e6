# Cost sweep: where pooling starts to pay
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-104605/charts/cost_sweep_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "inline" "threads: 1" "threads: 2"
"0" 152928 112655 126602
"5" 97008 96546 90957
"10" 67317 87754 81738
"20" 44416 91563 75830
"50" 22844 94755 65150
"100" 13572 89600 60480
"200" 7428 73492 47516
"400" 3882 70027 50378
EOD
$p99 << EOD
# label "inline" "threads: 1" "threads: 2"
"0" 4.6 3.92 4.54
"5" 2.88 2.89 2.15
"10" 1.97 0.99 2.88
"20" 1.04 5.65 0.81
"50" 2.56 2.42 2.81
"100" 7.68 1.24 1.41
"200" 1.81 0.49 0.89
"400" 7.45 0.45 3.02
EOD
set key outside right top
set multiplot layout 2,1
set xlabel "extra CPU per /ssr and /jwt call (us)"
set yrange [0:*]
set title "Saturating total rps"
set ylabel "requests/s"
plot $rps using 0:2:xtic(1) with linespoints lw 2 pt 7 title "inline", \
     $rps using 0:3 with linespoints lw 2 pt 7 title "threads: 1", \
     $rps using 0:4 with linespoints lw 2 pt 7 title "threads: 2"
set title "/ping p99 at fixed rate"
set ylabel "ms"
plot $p99 using 0:2:xtic(1) with linespoints lw 2 pt 7 title "inline", \
     $p99 using 0:3 with linespoints lw 2 pt 7 title "threads: 1", \
     $p99 using 0:4 with linespoints lw 2 pt 7 title "threads: 2"
unset multiplot
