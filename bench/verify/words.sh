#!/usr/bin/env bash
# Writes the fault-injection scripts' input: WORDS words, ten a line, from
# a 5,000-word vocabulary, the same for the same WORDS.
# Usage: bench/verify/words.sh WORDS FILE
set -euo pipefail
awk -v lines="$(($1 / 10))" 'BEGIN {
	srand(7)
	for (i = 0; i < 5000; i++) { w = ""; n = 3 + int(rand() * 7); for (j = 0; j < n; j++) w = w sprintf("%c", 97 + int(rand() * 26)); vocab[i] = w }
	for (l = 0; l < lines; l++) { s = vocab[int(rand() * 5000)]; for (k = 1; k < 10; k++) s = s " " vocab[int(rand() * 5000)]; print s }
}' > "$2"
