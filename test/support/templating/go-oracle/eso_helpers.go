package main

// ESO's template helpers beyond upstream Sprig that ESI lacked: hexdec, certSANs,
// rsaDecrypt, pemTruststoreToPKCS12[Pass]. Same names, arguments and results as ESO
// documents them (docs/templates.md); written for ESI.

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"strings"

	"software.sslmate.com/src/go-pkcs12"
)

// hexdec decodes a hexadecimal string (the inverse of Sprig's hexenc-style output).
func hexdec(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return "", errors.New("hexdec: the input is not hexadecimal: " + err.Error())
	}
	return string(b), nil
}

// trimJunk drops what precedes the first PEM header, as pem.Decode did before Go
// changed it: text in front of a block is skipped, not an error.
func trimJunk(input string) string {
	if i := strings.Index(input, "-----BEGIN"); i >= 0 {
		return input[i:]
	}
	return input
}

// certSANs lists the Subject Alternative Names of the first certificate of a PEM input:
// DNS names, IP addresses, email addresses, then URIs.
func certSANs(input string) ([]string, error) {
	block, _ := pem.Decode([]byte(trimJunk(input)))
	if block == nil {
		return nil, errors.New("certSANs: failed to decode PEM block")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, errors.New("certSANs: failed to parse certificate: " + err.Error())
	}
	sans := make([]string, 0, len(cert.DNSNames)+len(cert.IPAddresses)+len(cert.EmailAddresses)+len(cert.URIs))
	sans = append(sans, cert.DNSNames...)
	for _, ip := range cert.IPAddresses {
		sans = append(sans, ip.String())
	}
	sans = append(sans, cert.EmailAddresses...)
	for _, u := range cert.URIs {
		sans = append(sans, u.String())
	}
	return sans, nil
}

func oaepHash(name string) hash.Hash {
	switch name {
	case "SHA1":
		return crypto.SHA1.New()
	case "SHA512":
		return sha512.New()
	default: // "SHA256", "None" and anything else: SHA-256, as ESO
		return sha256.New()
	}
}

// rsaDecrypt decrypts `in` (raw ciphertext bytes) with a PEM RSA private key. Scheme
// "None" returns the input; "RSA-OAEP" uses OAEP with the named hash.
func rsaDecrypt(scheme, hashName, in, privateKey string) (string, error) {
	switch scheme {
	case "None":
		return in, nil
	case "RSA-OAEP":
	default:
		return "", fmt.Errorf("rsaDecrypt: decryption scheme %s is not supported", scheme)
	}
	block, _ := pem.Decode([]byte(privateKey))
	if block == nil {
		return "", errors.New("rsaDecrypt: failed to decode PEM block")
	}
	var key any
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	}
	if err != nil {
		return "", errors.New("rsaDecrypt: could not parse private key")
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	if !ok {
		return "", errors.New("rsaDecrypt: could not parse RSA private key")
	}
	out, err := rsa.DecryptOAEP(oaepHash(hashName), nil, rsaKey, []byte(in), nil)
	if err != nil {
		return "", errors.New("rsaDecrypt: error decrypting data with RSA")
	}
	return string(out), nil
}

// pemTruststoreToPKCS12Pass turns PEM certificates into a base64 PKCS#12 trust store
// (certificates only, no key) protected by `pass`.
func pemTruststoreToPKCS12Pass(input, pass string) (string, error) {
	var certs []*x509.Certificate
	rest := []byte(input)
	for len(strings.TrimSpace(string(rest))) > 0 {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return "", errors.New("pemTruststoreToPKCS12: the input holds something other than PEM certificates")
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return "", errors.New("pemTruststoreToPKCS12: unable to parse a certificate: " + err.Error())
		}
		certs = append(certs, c)
	}
	pfx, err := pkcs12.Modern.EncodeTrustStore(certs, pass)
	if err != nil {
		return "", errors.New("pemTruststoreToPKCS12: unable to encode the trust store: " + err.Error())
	}
	return base64.StdEncoding.EncodeToString(pfx), nil
}

func pemTruststoreToPKCS12(input string) (string, error) { return pemTruststoreToPKCS12Pass(input, "") }
