#!/bin/sh
# Median (and min/max) per engine and measure over every results*.txt line.
cat "${@:-results.txt}" | awk '
{ e=""; m=""; b="";
  for (i=1;i<=NF;i++){ split($i,kv,"="); f[kv[1]]=kv[2] }
  e=f["engine"]; m=f["mode"];
  if (m=="write") { k=e" b"f["batch"]" cpu"; v[k]=v[k]" "f["cpu_us_per_event"]; k=e" b"f["batch"]" wall"; v[k]=v[k]" "f["wall_us_per_event"] }
  else { k=e" read1 cpu"; v[k]=v[k]" "f["author_cpu_us"]; k=e" read2 cpu"; v[k]=v[k]" "f["tagwalk_cpu_us"] }
  delete f }
END { for (k in v) print k": "v[k] }' | sort | while read -r e what kind rest; do
  vals=$(echo $rest | tr " " "\n" | sort -n)
  n=$(echo "$vals" | wc -l)
  med=$(echo "$vals" | awk -v n=$n '{a[NR]=$1} END{ if (n%2) print a[(n+1)/2]; else print (a[n/2]+a[n/2+1])/2 }')
  printf "%-8s %-6s %-5s n=%d median=%6.1f min=%6.1f max=%6.1f\n" $e $what $kind $n $med $(echo "$vals"|head -1) $(echo "$vals"|tail -1)
done
