package main

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

func pemBlock(typ string, der []byte) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
}

func pkcs12KeyPass(pass, input string) (string, error) {
	key, _, _, err := pkcs12.DecodeChain([]byte(input), pass)
	if err != nil {
		return "", errors.New("pkcs12: unable to decode the archive: " + err.Error())
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", errors.New("pkcs12: unable to encode the private key: " + err.Error())
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pkcs12Key(input string) (string, error) { return pkcs12KeyPass("", input) }

func pkcs12CertPass(pass, input string) (string, error) {
	_, cert, cas, err := pkcs12.DecodeChain([]byte(input), pass)
	if err != nil {
		return "", errors.New("pkcs12: unable to decode the archive: " + err.Error())
	}
	var b strings.Builder
	b.WriteString(pemBlock("CERTIFICATE", cert.Raw))
	for _, ca := range cas {
		b.WriteString(pemBlock("CERTIFICATE", ca.Raw))
	}
	return b.String(), nil
}

func pkcs12Cert(input string) (string, error) { return pkcs12CertPass("", input) }

func parseCerts(input string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(input)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, errors.New("unable to parse a certificate: " + err.Error())
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

func parseKey(input string) (any, error) {
	rest := []byte(input)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key found")
		}
		if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			return k, nil
		}
		if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return k, nil
		}
		if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			return k, nil
		}
	}
}

func encodePkcs12(certs []*x509.Certificate, key, pass string) (string, error) {
	k, err := parseKey(key)
	if err != nil {
		return "", err
	}
	pfx, err := pkcs12.Modern.Encode(k, certs[0], certs[1:], pass)
	if err != nil {
		return "", errors.New("pkcs12: unable to encode the archive: " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(pfx), nil
}

func pemToPkcs12Pass(cert, key, pass string) (string, error) {
	certs, err := parseCerts(cert)
	if err != nil {
		return "", err
	}
	return encodePkcs12(certs[:1], key, pass)
}

func pemToPkcs12(cert, key string) (string, error) { return pemToPkcs12Pass(cert, key, "") }

func fullPemToPkcs12Pass(cert, key, pass string) (string, error) {
	certs, err := parseCerts(cert)
	if err != nil {
		return "", err
	}
	return encodePkcs12(certs, key, pass)
}

func fullPemToPkcs12(cert, key string) (string, error) { return fullPemToPkcs12Pass(cert, key, "") }
