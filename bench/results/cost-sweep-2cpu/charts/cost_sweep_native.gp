# Cost sweep: where pooling starts to pay
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench-out/20261129-102624/charts/cost_sweep_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "inline" "threads: 1" "threads: 2"
"0" 106626 97450 121919
"5" 88463 86606 86980
"10" 62630 100972 85738
"20" 42106 95358 61524
"50" 21153 76453 54096
"100" 13135 88907 48216
"200" 7395 83357 56132
"400" 3894 80806 49564
EOD
$p99 << EOD
# label "inline" "threads: 1" "threads: 2"
"0" 4.1 3.84 2.61
"5" 2.33 1.71 10.26
"10" 4.28 1.27 2.43
"20" 3.78 5.19 0.68
"50" 3.97 0.57 1.3
"100" 4.7 1.75 5.62
"200" 4.1 1.04 2.09
"400" 4.24 1.2 1.35
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
