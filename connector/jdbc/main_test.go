package jdbc

import (
	"os"
	"testing"

	"github.com/weirproject/weir/internal/testmysql"
)

// server is the MariaDB server of the package's tests.
var server *testmysql.Server

func TestMain(m *testing.M) { os.Exit(testmysql.Run(m, &server)) }
