# interop.sh ops (sourced): WRITE, SEND and READ each way over both planes.
# The app drives write_bw, send_bw and read_bw (U serves and checks what landed, the
# app checks what it read back); then U drives them (the app serves and checks).
tests=(write_bw send_bw read_bw)
start_app
start_peer u.log --serve 3 --drive write_bw,send_bw,read_bw --seconds 1
say "connect 10.0.0.2"
wait_for "$dir/d.log" "to 10.0.0.2: established" 10 || bad "no connection"
k=0
for t in "${tests[@]}"; do
  k=$((k + 1))
  app_run "$t" 1 $k || bad "app-driven $t did not end"
done
wait_peer u.log
quit_app
check_app_runs 3
for t in "${tests[@]}"; do
  # The side that receives the data checks it: U for write_bw and send_bw it served,
  # the app for the read_bw it drove (U, the responder, has nothing to compare).
  check=ok; [ $t = read_bw ] && check="not checked"
  grep -qE "udp_peer: served $t: [1-9][0-9]* messages .* 0 errors, data check $check \(0 bad bytes\)" "$dir/u.log" ||
    bad "U did not serve $t cleanly"
  grep -qE "udp_peer: drove $t: [1-9][0-9]* messages, .* 0 errors; local check (done|none) \(0 bad\); peer verdict (ok|not checked) \(0 bad bytes\)" "$dir/u.log" ||
    bad "U did not drive $t cleanly"
done
echo "--- summary"
grep -E "Engine [a-z_]+:|Data verification" "$dir/d.log" | sed 's/^ */app drove: /'
grep -E "udp_peer: (served|drove)" "$dir/u.log"
