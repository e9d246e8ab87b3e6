# Many event loops: heavy rps and /ping p99 by hosts
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/hosts-sweep-small-2cpu/charts/hosts_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$heavy << EOD
# label "inline" "knit W=1" "asio W=1"
"1" 9936.335 6509.75 6511.665
"2" 10186.5 ? 4344.25
EOD
$p99 << EOD
# label "inline" "knit W=1" "asio W=1"
"1" 10.32 4.234999999999999 5.49
"2" 11.205 ? 6.75
EOD
set key outside right top
set multiplot layout 2,1
set xlabel "hosts (event loops)"
set yrange [0:*]
set title "Saturating heavy rps (/ssr + /jwt)"
set ylabel "requests/s"
plot $heavy using 0:2:xtic(1) with linespoints lw 2 pt 7 lc rgb "black" title "inline", \
     $heavy using 0:3 with linespoints lw 2 pt 7 lc 1 title "knit W=1", \
     $heavy using 0:4 with linespoints lw 2 pt 7 lc 1 dt 2 title "asio W=1"
set title "/ping p99, saturating"
set ylabel "ms"
plot $p99 using 0:2:xtic(1) with linespoints lw 2 pt 7 lc rgb "black" title "inline", \
     $p99 using 0:3 with linespoints lw 2 pt 7 lc 1 title "knit W=1", \
     $p99 using 0:4 with linespoints lw 2 pt 7 lc 1 dt 2 title "asio W=1"
unset multiplot
