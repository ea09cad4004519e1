package pgwire

import (
	"bytes"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"golang.org/x/text/secure/precis"
)

// SCRAM-SHA-256 (RFC 5802 and RFC 7677) as Postgres runs it inside SASL: the client names the mechanism in
// SASLInitialResponse with its client-first-message, the server answers with its nonce, salt and iteration
// count, the client proves it knows the password, the server proves it knows the verifier. Postgres ignores the
// SCRAM user name (n=) and authenticates the startup packet's user; so do we. We offer no channel binding
// (SCRAM-SHA-256-PLUS): a client over TLS says "y" (it could bind, the server cannot), which is accepted.

const (
	scramMechanism  = "SCRAM-SHA-256"
	scramIterations = 4096 // Postgres' scram_iterations default
	scramSaltLen    = 16
	scramNonceLen   = 18
)

// scramVerifier is what the server keeps of a password (Postgres' rolpassword "SCRAM-SHA-256$..."): the salt,
// the iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key")) and ServerKey = HMAC(SaltedPassword,
// "Server Key").
type scramVerifier struct {
	salt       []byte
	iterations int
	storedKey  []byte
	serverKey  []byte
}

func newScramVerifier(password string, salt []byte, iterations int) scramVerifier {
	salted, err := pbkdf2.Key(sha256.New, saslPrep(password), salt, iterations, sha256.Size)
	if err != nil {
		panic(err) // only in FIPS mode with parameters we never pass
	}
	clientKey := hmacSHA256(salted, []byte("Client Key"))
	stored := sha256.Sum256(clientKey)
	return scramVerifier{salt: salt, iterations: iterations, storedKey: stored[:],
		serverKey: hmacSHA256(salted, []byte("Server Key"))}
}

// mockVerifier stands in for a user that does not exist, as Postgres' scram_mock_salt does: a salt that is
// stable for the name (so probing twice shows no difference) and keys no proof can match.
func (s *Server) mockVerifier(user string) scramVerifier {
	salt := hmacSHA256(s.mockKey, []byte("salt\x00"+user))[:scramSaltLen]
	return scramVerifier{salt: salt, iterations: scramIterations,
		storedKey: hmacSHA256(s.mockKey, []byte("stored\x00"+user)),
		serverKey: hmacSHA256(s.mockKey, []byte("server\x00"+user))}
}

// saslPrep normalizes a password as libpq and pgx do before hashing it (SASLprep, here PRECIS OpaqueString);
// a password it rejects is used as is, as Postgres does.
func saslPrep(password string) string {
	if p, err := precis.OpaqueString.String(password); err == nil {
		return p
	}
	return password
}

func hmacSHA256(key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return m.Sum(nil)
}

// errSCRAMMalformed is a SCRAM message that does not follow the grammar (Postgres: 08P01, "malformed SCRAM
// message").
var errSCRAMMalformed = errors.New("malformed SCRAM message")

// scramExchange is the server side of one SCRAM exchange.
type scramExchange struct {
	v               scramVerifier
	gs2Header       string // "n,," or "y,,": the client's channel binding flag, echoed base64 in c=
	clientFirstBare string
	serverFirst     string
	nonce           string // client nonce + server nonce
}

// clientFirst reads the client-first-message and returns the server-first-message.
func (x *scramExchange) clientFirst(msg []byte, serverNonce []byte) (string, error) {
	s := string(msg)
	// gs2-header: cbind-flag "," [authzid] ","
	var flag string
	switch {
	case strings.HasPrefix(s, "n,"), strings.HasPrefix(s, "y,"):
		flag, s = s[:2], s[2:]
	case strings.HasPrefix(s, "p="):
		return "", errors.New("channel binding is not supported (the server offers SCRAM-SHA-256 only)")
	default:
		return "", errSCRAMMalformed
	}
	comma := strings.IndexByte(s, ',')
	if comma < 0 {
		return "", errSCRAMMalformed
	}
	if comma > 0 {
		return "", errors.New("client uses authorization identity, but it is not supported")
	}
	x.gs2Header = flag + ","
	x.clientFirstBare = s[1:]
	// client-first-message-bare: [reserved-mext ","] username "," nonce ["," extensions]
	attrs := strings.Split(x.clientFirstBare, ",")
	if len(attrs) < 2 || strings.HasPrefix(attrs[0], "m=") {
		return "", errSCRAMMalformed
	}
	if !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", errSCRAMMalformed
	}
	clientNonce := attrs[1][2:]
	if clientNonce == "" || !printable(clientNonce) {
		return "", errSCRAMMalformed
	}
	x.nonce = clientNonce + base64.StdEncoding.EncodeToString(serverNonce)
	x.serverFirst = "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(x.v.salt) + ",i=" + strconv.Itoa(x.v.iterations)
	return x.serverFirst, nil
}

// printable is RFC 5802's printable: %x21-2B / %x2D-7E (no comma).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// clientFinal checks the client-final-message and returns the server-final-message; ok is false when the proof
// does not match (a wrong password or an unknown user).
func (x *scramExchange) clientFinal(msg []byte) (serverFinal string, ok bool, err error) {
	s := string(msg)
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return "", false, errSCRAMMalformed
	}
	withoutProof, proofB64 := s[:i], s[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", false, errSCRAMMalformed
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil {
		return "", false, errSCRAMMalformed
	}
	if string(cbind) != x.gs2Header {
		return "", false, errors.New("SCRAM channel binding check failed")
	}
	if attrs[1][2:] != x.nonce {
		return "", false, errors.New("SCRAM nonce mismatch")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != sha256.Size {
		return "", false, errSCRAMMalformed
	}
	authMessage := []byte(x.clientFirstBare + "," + x.serverFirst + "," + withoutProof)
	// ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage); the client knows the password iff H(ClientKey)
	// is StoredKey.
	clientSig := hmacSHA256(x.v.storedKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for k := range clientKey {
		clientKey[k] = proof[k] ^ clientSig[k]
	}
	got := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(got[:], x.v.storedKey) != 1 {
		return "", false, nil
	}
	serverSig := hmacSHA256(x.v.serverKey, authMessage)
	return "v=" + base64.StdEncoding.EncodeToString(serverSig), true, nil
}

// hasNUL reports a SASL payload that cannot be a SCRAM message.
func hasNUL(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }
