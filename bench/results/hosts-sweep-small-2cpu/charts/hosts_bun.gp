# Many event loops: heavy rps and /ping p99 by hosts
set terminal pngcairo size 960,540 noenhanced
set output "/work/main/bench/results/hosts-sweep-small-2cpu/charts/hosts_bun.png"
set datafile missing "?"
set key inside left top opaque
set grid
$heavy << EOD
# label "inline" "knit W=1" "asio W=1"
"1" 8216.335 6803.915 6230.5
"2" 8995.25 5665.335 6427.25
EOD
$p99 << EOD
# label "inline" "knit W=1" "asio W=1"
"1" 18.48 9.96 10.575
"2" 16.925 12.125 9.73
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
