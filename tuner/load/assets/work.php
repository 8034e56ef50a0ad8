<?php
// The php-fpm sandbox's workload (apache-advisor, issue 30): like mixed.lua,
// a request that computes for a while and then waits, so that a php-fpm
// child is held for a known time. ?n= square roots (default 20000), then
// ?wait_ms= milliseconds asleep (default 50).
$n = isset($_GET['n']) ? max(0, min((int)$_GET['n'], 5000000)) : 20000;
$wait = isset($_GET['wait_ms']) ? max(0, min((int)$_GET['wait_ms'], 10000)) : 50;
$sum = 0.0;
for ($i = 1; $i <= $n; $i++) {
    $sum += sqrt($i);
}
usleep($wait * 1000);
header('Content-Type: text/plain');
echo "n=$n wait_ms=$wait sum=" . round($sum) . "\n";
