package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
)

// filterPEM keeps the PEM blocks of one type, in order, as ESO: the type matches
// case-insensitively, a block that does not decode is skipped, and no block of the type
// gives "" — an error only when nothing matched and text that is not PEM is left over.
func filterPEM(pemType, input string) (string, error) {
	var b strings.Builder
	data := []byte(trimJunk(input))
	var rest []byte
	for {
		var block *pem.Block
		block, rest = pem.Decode(data)
		data = rest
		if block == nil {
			break
		}
		if strings.EqualFold(block.Type, pemType) {
			b.Write(pem.EncodeToMemory(block))
		}
	}
	if b.Len() == 0 && len(rest) != 0 {
		return "", errors.New("filterPEM: found junk (text that is not PEM) and no block of type " + pemType)
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
