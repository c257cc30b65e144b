// Windowcount is a placeholder until the window package exists.
package main

import _ "embed"

//go:embed sample.csv
var sample string

func main() {}
