package testmysql

import (
	"os"
	"testing"
)

var server *Server

func TestMain(m *testing.M) { os.Exit(Run(m, &server)) }

// TestServer checks that the server runs InnoDB with XA, which the JDBC
// sink's exactly-once mode needs, and that databases are separate.
func TestServer(t *testing.T) {
	Need(t, server)
	a, b := Open(t, server.NewDatabase(t)), Open(t, server.NewDatabase(t))
	if _, err := a.Exec("CREATE TABLE x (k INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec("CREATE TABLE x (k INT PRIMARY KEY) ENGINE=InnoDB"); err != nil {
		t.Fatalf("the second database is not separate: %v", err)
	}
	rows, err := a.Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
}
