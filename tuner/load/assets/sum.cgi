#!/usr/bin/perl
# CPU-bound CGI after Andersson et al. (2003): sum N random numbers.
use strict;
use warnings;
my $n = 100000;
if (($ENV{QUERY_STRING} // '') =~ /(?:^|&)n=(\d+)/) { $n = $1; }
$n = 5000000 if $n > 5000000;
my $sum = 0;
$sum += rand() for 1 .. $n;
print "Content-Type: text/plain\r\n\r\n";
printf "%d %.6f\n", $n, $sum;
