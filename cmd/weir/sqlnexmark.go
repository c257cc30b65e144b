package main

// The nexmark SQL connector: `weir sql` reads the reference suite's
// datagen table ('connector' = 'nexmark') from weir's generator.
import _ "github.com/weirproject/weir/internal/sql/connectors/nexmark"
