package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
)

// filterPEM keeps the PEM blocks of one type (e.g. CERTIFICATE), in order.
func filterPEM(pemType, input string) (string, error) {
	var b strings.Builder
	rest := []byte(input)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == pemType {
			b.Write(pem.EncodeToMemory(block))
		}
	}
	if b.Len() == 0 {
		return "", errors.New("filterPEM: no PEM block of type " + pemType + " found")
	}
	return b.String(), nil
}

func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawSubject, c.RawIssuer) && c.CheckSignatureFrom(c) == nil
}

// filterCertChain keeps the certificates of one role in a PEM chain: leaf (not a CA),
// intermediate (a CA signed by another) or root (a self-signed CA).
func filterCertChain(certType, input string) (string, error) {
	certs, err := parseCerts(input)
	if err != nil {
		return "", errors.New("filterCertChain: " + err.Error())
	}
	var keep func(*x509.Certificate) bool
	switch certType {
	case "leaf":
		keep = func(c *x509.Certificate) bool { return !c.IsCA }
	case "intermediate":
		keep = func(c *x509.Certificate) bool { return c.IsCA && !selfSigned(c) }
	case "root":
		keep = func(c *x509.Certificate) bool { return c.IsCA && selfSigned(c) }
	default:
		return "", errors.New("filterCertChain: certificate type must be leaf, intermediate or root, got " + certType)
	}
	var b strings.Builder
	for _, c := range certs {
		if keep(c) {
			b.WriteString(pemBlock("CERTIFICATE", c.Raw))
		}
	}
	return b.String(), nil
}
