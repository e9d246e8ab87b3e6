# Cost sweep: where pooling starts to pay
set terminal pngcairo size 960,540 noenhanced
set output "/tmp/meas/cost-sweep/charts/cost_sweep_native.png"
set datafile missing "?"
set key inside left top opaque
set grid
$rps << EOD
# label "inline" "threads: 1"
"0" 123012 109392
"5" 78577 98047
"10" 60740 85712
"20" 45158 74555
"50" 24095 62055
"100" 14093 74693
"200" 7778 74756
"400" 4047 63818
EOD
$p99 << EOD
# label "inline" "threads: 1"
"0" 0.65 2.27
"5" 0.58 0.52
"10" 0.62 0.7
"20" 1.27 0.75
"50" 0.64 0.62
"100" 0.65 0.35
"200" 0.6 0.36
"400" 1.59 0.3
EOD
set key outside right top
set multiplot layout 2,1
set xlabel "extra CPU per /ssr and /jwt call (us)"
set yrange [0:*]
set title "Saturating total rps"
set ylabel "requests/s"
plot $rps using 0:2:xtic(1) with linespoints lw 2 pt 7 title "inline", \
     $rps using 0:3 with linespoints lw 2 pt 7 title "threads: 1"
set title "/ping p99 at fixed rate"
set ylabel "ms"
plot $p99 using 0:2:xtic(1) with linespoints lw 2 pt 7 title "inline", \
     $p99 using 0:3 with linespoints lw 2 pt 7 title "threads: 1"
unset multiplot
