package parser

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestZZScratch(t *testing.T) {
	src, _ := os.ReadFile("/tmp/zz.sql")
	for _, q := range strings.Split(string(src), "\n===\n") {
		q = strings.TrimSpace(q)
		if q == "" {
			continue
		}
		stmts, err := Parse(q)
		fmt.Println(">>>", q)
		if err != nil {
			fmt.Println(renderError(q, err))
			continue
		}
		for _, s := range stmts {
			fmt.Println(Format(s))
			if os.Getenv("ZZAST") != "" {
				fmt.Println(dump(q, s))
			}
		}
	}
}
