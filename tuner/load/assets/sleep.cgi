#!/usr/bin/perl
# Slow endpoint: holds its worker for ms milliseconds while using no CPU.
# With n=N it first sums N random numbers (as sum.cgi does), then sleeps:
# a request that computes and then waits on a backend.
use strict;
use warnings;
my $ms = 1000;
my $n = 0;
if (($ENV{QUERY_STRING} // '') =~ /(?:^|&)ms=(\d+)/) { $ms = $1; }
if (($ENV{QUERY_STRING} // '') =~ /(?:^|&)n=(\d+)/) { $n = $1; }
$ms = 60000 if $ms > 60000;
$n = 5000000 if $n > 5000000;
my $sum = 0;
$sum += rand() for 1 .. $n;
select(undef, undef, undef, $ms / 1000.0);
print "Content-Type: text/plain\r\n\r\n";
print "slept $ms ms\n";
