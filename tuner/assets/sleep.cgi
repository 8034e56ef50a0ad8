#!/usr/bin/perl
# Slow endpoint: holds its worker for ms milliseconds while using no CPU.
use strict;
use warnings;
my $ms = 1000;
if (($ENV{QUERY_STRING} // '') =~ /(?:^|&)ms=(\d+)/) { $ms = $1; }
$ms = 60000 if $ms > 60000;
select(undef, undef, undef, $ms / 1000.0);
print "Content-Type: text/plain\r\n\r\n";
print "slept $ms ms\n";
