package main

// The SQL connectors that live in packages of their own register
// themselves with the planner when imported: `weir sql` offers them all.
import (
	_ "github.com/weirproject/weir/internal/sql/connectors/jdbc"
	_ "github.com/weirproject/weir/internal/sql/connectors/kafka"
)
