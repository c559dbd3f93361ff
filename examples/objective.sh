#!/bin/sh
# A stand-in for a training script, for `cfl tune --command` (docs/tune.md):
# takes a learning rate and an optimizer name and prints a made-up validation
# accuracy on its last line, best near lr = 0.01 with adam.
lr=$1
opt=$2
awk -v lr="$lr" -v opt="$opt" 'BEGIN {
	d = log(lr) / log(10) + 2
	print "training with lr " lr " and " opt
	printf "%.6f\n", 0.9 - 0.02 * d * d + (opt == "adam" ? 0.05 : 0)
}'
