package main

import (
	"errors"
	"fmt"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

// Ceilings of the Sprig functions that allocate in proportion to a number in the
// template: a realistic template stays far below them, a hostile one fails with a message
// instead of exhausting the engine's memory.
const (
	maxListItems   = 1_000_000
	maxRepeatBytes = 16 << 20
)

func tooMany(fn string, n int) error {
	return fmt.Errorf("%s: at most %d items, asked for %d", fn, maxListItems, n)
}

func itemCount(start, stop, step int) int {
	if step == 0 {
		return 0
	}
	n := (stop - start) / step
	if n < 0 {
		return -n
	}
	return n
}

func bounded(m template.FuncMap) {
	until := m["until"].(func(int) []int)
	untilStep := m["untilStep"].(func(int, int, int) []int)
	seq := m["seq"].(func(...int) string)
	repeat := m["repeat"].(func(int, string) string)
	m["until"] = func(n int) ([]int, error) {
		if n > maxListItems || n < -maxListItems {
			return nil, tooMany("until", n)
		}
		return until(n), nil
	}
	m["untilStep"] = func(start, stop, step int) ([]int, error) {
		if n := itemCount(start, stop, step); n > maxListItems {
			return nil, tooMany("untilStep", n)
		}
		return untilStep(start, stop, step), nil
	}
	m["seq"] = func(params ...int) (string, error) {
		start, stop, step := 1, 0, 1
		switch len(params) {
		case 1:
			stop = params[0]
		case 2:
			start, stop = params[0], params[1]
		case 3:
			start, step, stop = params[0], params[1], params[2]
		}
		if n := itemCount(start, stop, step); n > maxListItems {
			return "", tooMany("seq", n)
		}
		return seq(params...), nil
	}
	m["repeat"] = func(count int, str string) (string, error) {
		if count > 0 && len(str) > 0 && count > maxRepeatBytes/len(str) {
			return "", errors.New("repeat: the result would exceed the size limit")
		}
		return repeat(count, str), nil
	}
}

// funcMap is Sprig's text function set without the functions ESO removes for safety
// (reading the process environment, resolving host names), plus ESO's own helpers
// (written for ESI, same names and signatures).
func funcMap() template.FuncMap {
	m := sprig.TxtFuncMap()
	delete(m, "env")
	delete(m, "expandenv")
	delete(m, "getHostByName")
	bounded(m)
	for name, fn := range esoFuncs() {
		m[name] = fn
	}
	return m
}

func esoFuncs() template.FuncMap {
	return template.FuncMap{
		"pkcs12key":                 pkcs12Key,
		"pkcs12keyPass":             pkcs12KeyPass,
		"pkcs12cert":                pkcs12Cert,
		"pkcs12certPass":            pkcs12CertPass,
		"pemToPkcs12":               pemToPkcs12,
		"pemToPkcs12Pass":           pemToPkcs12Pass,
		"fullPemToPkcs12":           fullPemToPkcs12,
		"fullPemToPkcs12Pass":       fullPemToPkcs12Pass,
		"filterPEM":                 filterPEM,
		"filterCertChain":           filterCertChain,
		"jwkPublicKeyPem":           jwkPublicKeyPem,
		"jwkPrivateKeyPem":          jwkPrivateKeyPem,
		"hexdec":                    hexdec,
		"certSANs":                  certSANs,
		"rsaDecrypt":                rsaDecrypt,
		"pemTruststoreToPKCS12":     pemTruststoreToPKCS12,
		"pemTruststoreToPKCS12Pass": pemTruststoreToPKCS12Pass,
		"toYaml":                    toYaml,
		"fromYaml":                  fromYaml,
	}
}
