package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Users of the static token file.
const (
	// AdminUser is in group system:masters and may do anything.
	AdminUser = "admin"
	// RestrictedUser has no permissions beyond what RBAC grants every
	// authenticated user (discovery); tests bind roles to it themselves.
	RestrictedUser = "restricted"
)

// credentials are the certificates, keys and tokens of one Env, generated
// in Go and written as files for kube-apiserver's flags.
type credentials struct {
	caPEM []byte // trusted by clients

	caFile        string // CA certificate (also --client-ca-file)
	certFile      string // serving certificate for 127.0.0.1 and localhost
	keyFile       string // its private key
	saKeyFile     string // RSA key signing service account tokens
	saPubFile     string // its public key, verifying them
	tokenFile     string // static tokens of AdminUser and RestrictedUser
	adminToken    string
	restrictToken string
}

// certValidity is how long generated certificates are valid; an Env lives
// for a test run, a demo at most.
const certValidity = 7 * 24 * time.Hour

// writeCredentials generates an Env's credentials into dir.
func writeCredentials(dir string) (*credentials, error) {
	c := &credentials{
		caFile:    filepath.Join(dir, "ca.crt"),
		certFile:  filepath.Join(dir, "apiserver.crt"),
		keyFile:   filepath.Join(dir, "apiserver.key"),
		saKeyFile: filepath.Join(dir, "sa.key"),
		saPubFile: filepath.Join(dir, "sa.pub"),
		tokenFile: filepath.Join(dir, "tokens.csv"),
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubetyped-informers testenv CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if caTmpl.SerialNumber, err = serialNumber(); err != nil {
		return nil, err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA certificate: %w", err)
	}
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(certValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
	}
	if tmpl.SerialNumber, err = serialNumber(); err != nil {
		return nil, err
	}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("creating the serving certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the serving key: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating the service account key: %w", err)
	}
	saKeyDER, err := x509.MarshalPKCS8PrivateKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the service account key: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encoding the service account public key: %w", err)
	}

	c.adminToken, c.restrictToken = rand.Text(), rand.Text()
	// Format: token,user,uid,"group1,group2".
	tokens := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n%s,%s,%s\n",
		c.adminToken, AdminUser, AdminUser, c.restrictToken, RestrictedUser, RestrictedUser)

	files := []struct {
		path string
		data []byte
	}{
		{c.caFile, c.caPEM},
		{c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})},
		{c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})},
		{c.saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: saKeyDER})},
		{c.saPubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER})},
		{c.tokenFile, []byte(tokens)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, fmt.Errorf("writing credentials: %w", err)
		}
	}
	return c, nil
}

// serialNumber returns a random certificate serial number.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return n, nil
}
