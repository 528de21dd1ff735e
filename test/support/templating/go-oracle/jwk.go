package main

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
)

type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	D   string `json:"d"`
	P   string `json:"p"`
	Q   string `json:"q"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

func b64url(field, s string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil || len(b) == 0 {
		return nil, errors.New("jwk: field " + field + " is missing or not base64url")
	}
	return b, nil
}

func bigInt(field, s string) (*big.Int, error) {
	b, err := b64url(field, s)
	if err != nil {
		return nil, err
	}
	return new(big.Int).SetBytes(b), nil
}

func curve(name string) (elliptic.Curve, error) {
	switch name {
	case "P-256":
		return elliptic.P256(), nil
	case "P-384":
		return elliptic.P384(), nil
	case "P-521":
		return elliptic.P521(), nil
	}
	return nil, errors.New("jwk: unsupported curve " + name)
}

func parseJWK(input string) (*jwk, error) {
	var k jwk
	if err := json.Unmarshal([]byte(input), &k); err != nil {
		return nil, errors.New("jwk: not a JSON Web Key")
	}
	return &k, nil
}

func (k *jwk) public() (any, error) {
	switch k.Kty {
	case "RSA":
		n, err := bigInt("n", k.N)
		if err != nil {
			return nil, err
		}
		e, err := bigInt("e", k.E)
		if err != nil {
			return nil, err
		}
		return &rsa.PublicKey{N: n, E: int(e.Int64())}, nil
	case "EC":
		c, err := curve(k.Crv)
		if err != nil {
			return nil, err
		}
		x, err := bigInt("x", k.X)
		if err != nil {
			return nil, err
		}
		y, err := bigInt("y", k.Y)
		if err != nil {
			return nil, err
		}
		return &ecdsa.PublicKey{Curve: c, X: x, Y: y}, nil
	case "OKP":
		if k.Crv != "Ed25519" {
			return nil, errors.New("jwk: unsupported curve " + k.Crv)
		}
		x, err := b64url("x", k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("jwk: field x is not an Ed25519 public key")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, errors.New("jwk: unsupported key type " + k.Kty)
}

func (k *jwk) private() (any, error) {
	pub, err := k.public()
	if err != nil {
		return nil, err
	}
	switch p := pub.(type) {
	case *rsa.PublicKey:
		d, err := bigInt("d", k.D)
		if err != nil {
			return nil, err
		}
		pp, err := bigInt("p", k.P)
		if err != nil {
			return nil, err
		}
		q, err := bigInt("q", k.Q)
		if err != nil {
			return nil, err
		}
		key := &rsa.PrivateKey{PublicKey: *p, D: d, Primes: []*big.Int{pp, q}}
		if err := key.Validate(); err != nil {
			return nil, errors.New("jwk: inconsistent RSA key")
		}
		key.Precompute()
		return key, nil
	case *ecdsa.PublicKey:
		d, err := bigInt("d", k.D)
		if err != nil {
			return nil, err
		}
		return &ecdsa.PrivateKey{PublicKey: *p, D: d}, nil
	default:
		seed, err := b64url("d", k.D)
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, errors.New("jwk: field d is not an Ed25519 seed")
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
}

// jwkPublicKeyPem: the public part of a JWK as a PEM PKIX public key.
func jwkPublicKeyPem(input string) (string, error) {
	k, err := parseJWK(input)
	if err != nil {
		return "", err
	}
	pub, err := k.public()
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", errors.New("jwk: unable to encode the public key")
	}
	return pemBlock("PUBLIC KEY", der), nil
}

// jwkPrivateKeyPem: a private JWK as a PEM PKCS#8 private key.
func jwkPrivateKeyPem(input string) (string, error) {
	k, err := parseJWK(input)
	if err != nil {
		return "", err
	}
	priv, err := k.private()
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", errors.New("jwk: unable to encode the private key")
	}
	return pemBlock("PRIVATE KEY", der), nil
}
