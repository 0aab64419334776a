// Command mintjwt makes what a benchmark of JWT verification needs: a fresh
// ES256 key, its key set written to a JWKS file, and one token it signed,
// printed on stdout, for the issuer and audience given and valid for an
// hour. The private key is never written anywhere.
//
//	mintjwt --jwks jwks.json --iss https://idp.bench --aud https://gw.bench/mcp
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

func main() {
	jwksPath := flag.String("jwks", "jwks.json", "where to write the key set (`file`)")
	iss := flag.String("iss", "https://idp.bench", "the token's issuer")
	aud := flag.String("aud", "https://gw.bench/mcp", "the token's audience")
	sub := flag.String("sub", "bench-user", "the token's subject")
	flag.Parse()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: key.Public(), KeyID: "bench", Algorithm: string(jose.ES256), Use: "sig"}}}
	b, err := json.Marshal(set)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*jwksPath, b, 0o644); err != nil {
		log.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "bench"))
	if err != nil {
		log.Fatal(err)
	}
	now := time.Now()
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Issuer: *iss, Subject: *sub, Audience: jwt.Audience{*aud},
		IssuedAt: jwt.NewNumericDate(now), NotBefore: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}).Serialize()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tok)
}
