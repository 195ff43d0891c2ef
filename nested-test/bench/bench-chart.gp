# hvokit: the make bench table as a chart.
#   gnuplot -e "data='bench.dat'; out='bench.png'; title='...'" bench-chart.gp
# data comes from "hvobench summarize --chart-data": per metric, the median
# and min/max of stock and patched, HVO off and on, each relative to stock's
# HVO-off median (= 1).  Log scale: stock's 2 MiB figures are 10-20x.
set terminal pngcairo size 1100,560 noenhanced font ",10"
set output out
set title title
set style data histograms
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.5:32]
set ytics (0.5, 0.75, 1, 1.25, 1.5, 2, 4, 8, 16, 32)
set grid ytics
set ylabel "time relative to stock with HVO off (median; bars: min-max of the rounds)"
set xtics rotate by -20 nomirror
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1
plot data using 2:3:4:xtic(1) title "stock, HVO off" lc rgb "#9e9e9e", \
     ''   using 5:6:7 title "stock, HVO on" lc rgb "#424242", \
     ''   using 8:9:10 title "patched, HVO off" lc rgb "#90caf9", \
     ''   using 11:12:13 title "patched, HVO on" lc rgb "#1565c0"
