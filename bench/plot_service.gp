# Throughput against concurrency from bench/service_bench.sh's CSV.
#   gnuplot -e "csv='docs/service_bench.csv'; out='docs/service_throughput.png'" bench/plot_service.gp
set terminal pngcairo size 900,680 font ",11"
set output out
set datafile separator ","
set title "TAND 16x16 int32, server on one core (taskset -c 0), load on the other"
set xlabel "concurrency (unary calls in flight, or streams: depth 32, batches 4 x 32 jobs)"
set ylabel "tiles per second"
set logscale x 2
set xrange [0.8:80]
set yrange [0:*]
set key below maxrows 4
set grid
series(label) = sprintf("< grep '^%s,' %s | grep ',16x16,'", label, csv)
plot series("plain-echo")                using 3:8 with linespoints lw 2 dt 2 title "plain echo (unary)", \
     series("plain-echo-stream")         using 3:8 with linespoints lw 2 dt 2 title "plain echo (stream)", \
     series("echo")                      using 3:8 with linespoints lw 2 dt 3 title "echo with ptoserve's gRPC setup (unary)", \
     series("ptoserve-unary")            using 3:8 with linespoints lw 2 title "ptoserve unary, batching on", \
     series("ptoserve-unary-unbatched")  using 3:8 with linespoints lw 2 title "ptoserve unary, batching off", \
     series("ptoserve-stream")           using 3:8 with linespoints lw 2 title "ptoserve stream, batching on", \
     series("ptoserve-stream-unbatched") using 3:8 with linespoints lw 2 title "ptoserve stream, batching off", \
     series("ptoserve-batch")            using 3:8 with linespoints lw 3 title "ptoserve ExecuteBatches, 32 jobs a message"
