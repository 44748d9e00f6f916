// The system OpenSSL (libssl-dev), plus one-line wrappers for what Swift cannot import:
// function-like macros and OpenSSL 3's option bits.
#ifndef AASA_COPENSSL_H
#define AASA_COPENSSL_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/cms.h>
#include <openssl/rand.h>
#include <openssl/decoder.h>
#include <openssl/provider.h>
#include <openssl/ec.h>
#include <openssl/rsa.h>

static inline long aasa_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_min_proto_version(ctx, v); }
static inline long aasa_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int v) { return SSL_CTX_set_max_proto_version(ctx, v); }
static inline long aasa_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long aasa_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_session_cache_mode(ctx, mode); }
static inline long aasa_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) { return SSL_CTX_set_tlsext_servername_callback(ctx, cb); }

// Options: no compression, no renegotiation, server cipher order, and OpenSSL 3's
// "unexpected EOF is a normal close" (clients that drop the TCP connection without close_notify).
static inline uint64_t aasa_server_options(void) {
    return SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE
        | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_SSLv3 | SSL_OP_NO_TLSv1 | SSL_OP_NO_TLSv1_1;
}
// SSL_MODE_RELEASE_BUFFERS: an idle connection holds no record buffers (some 34 KB). A busy
// connection turns it off for a while (aasa_SSL_keep_buffers).
static inline long aasa_server_modes(void) {
    return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS;
}
// Keeps the record buffers between records (keep != 0), or gives them back now and after each
// record again.
static inline void aasa_SSL_keep_buffers(SSL *ssl, int keep) {
    if (keep) {
        SSL_clear_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
    } else {
        SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS);
        SSL_free_buffers(ssl);
    }
}
static inline long aasa_session_cache_server(void) { return SSL_SESS_CACHE_SERVER; }
static inline long aasa_SSL_CTX_set_read_ahead(SSL_CTX *ctx, long yes) { return SSL_CTX_set_read_ahead(ctx, yes); }
static inline int aasa_tlsext_ok(void) { return SSL_TLSEXT_ERR_OK; }
static inline int aasa_tlsext_noack(void) { return SSL_TLSEXT_ERR_NOACK; }
static inline int aasa_tls1_2_version(void) { return TLS1_2_VERSION; }
static inline int aasa_tls1_3_version(void) { return TLS1_3_VERSION; }

// ALPN: the server's lists live in static storage so the selected protocol never points at a
// temporary; SSL_select_next_proto walks the server's list first (our preference: h2, then
// http/1.1) and points `out` into it. `arg` is non-NULL when the context offers h2.
static const unsigned char aasa_alpn_http11[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
static const unsigned char aasa_alpn_h2_http11[] = { 2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
static inline int aasa_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                   const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl;
    const unsigned char *list = arg ? aasa_alpn_h2_http11 : aasa_alpn_http11;
    unsigned int length = arg ? sizeof aasa_alpn_h2_http11 : sizeof aasa_alpn_http11;
    unsigned char *o = NULL;
    if (SSL_select_next_proto(&o, outlen, list, length, in, inlen) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = o;
    return SSL_TLSEXT_ERR_OK;
}
static inline const unsigned char *aasa_alpn_h2_http11_list(void) { return aasa_alpn_h2_http11; }
static inline void aasa_SSL_CTX_use_alpn(SSL_CTX *ctx, int offer_h2) { SSL_CTX_set_alpn_select_cb(ctx, aasa_alpn_select, offer_h2 ? (void *)aasa_alpn_h2_http11_list() : NULL); }

// Subject alternative names (stack macros).
static inline int aasa_general_names_count(GENERAL_NAMES *names) { return sk_GENERAL_NAME_num(names); }
static inline GENERAL_NAME *aasa_general_names_get(GENERAL_NAMES *names, int i) { return sk_GENERAL_NAME_value(names, i); }
static inline void aasa_general_names_free(GENERAL_NAMES *names) { GENERAL_NAMES_free(names); }
static inline int aasa_general_name_type(GENERAL_NAME *n) { return n->type; }
static inline ASN1_IA5STRING *aasa_general_name_dns(GENERAL_NAME *n) { return n->type == GEN_DNS ? n->d.dNSName : NULL; }
static inline int aasa_gen_dns(void) { return GEN_DNS; }

// A certificate chain for SSL_use_cert_and_key (stack macros); freeing it frees its certificates.
static inline STACK_OF(X509) *aasa_x509_chain_new(void) { return sk_X509_new_null(); }
static inline int aasa_x509_chain_push(STACK_OF(X509) *chain, X509 *x) { return sk_X509_push(chain, x); }
static inline void aasa_x509_chain_free(STACK_OF(X509) *chain) { sk_X509_pop_free(chain, X509_free); }
// What a private key's decoder makes: the key pair (a macro of other macros).
static inline int aasa_evp_pkey_keypair(void) { return EVP_PKEY_KEYPAIR; }
// The key types whose private keys OpenSSL 3.0 still reads without a provider (macros of NIDs).
static inline int aasa_evp_pkey_ec(void) { return EVP_PKEY_EC; }
static inline int aasa_evp_pkey_rsa(void) { return EVP_PKEY_RSA; }
// An EC (SEC 1) or RSA (PKCS #1) private key in DER read by OpenSSL's built-in code, not a
// provider's: what d2i_PrivateKey_ex falls back to after its decoders have found nothing
// (crypto/asn1/d2i_pr.c, d2i_PrivateKey_legacy, through old_priv_decode), without asking
// them first. Asking them cost 70 k instructions a key in a library context without decoders,
// most of it formatting the four errors they raise. d2i_ECPrivateKey and d2i_RSAPrivateKey
// are deprecated in OpenSSL 3.0 (not removed): the project's one deprecated use, kept here.
static inline EVP_PKEY *aasa_d2i_builtin_private_key(int type, const unsigned char **in, long length) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    EVP_PKEY *key = EVP_PKEY_new();
    if (key == NULL) return NULL;
    if (type == EVP_PKEY_EC) {
        EC_KEY *ec = d2i_ECPrivateKey(NULL, in, length);
        if (ec != NULL && EVP_PKEY_assign(key, EVP_PKEY_EC, ec) == 1) return key;
        EC_KEY_free(ec);
    } else if (type == EVP_PKEY_RSA) {
        RSA *rsa = d2i_RSAPrivateKey(NULL, in, length);
        if (rsa != NULL && EVP_PKEY_assign(key, EVP_PKEY_RSA, rsa) == 1) return key;
        RSA_free(rsa);
    }
#pragma GCC diagnostic pop
    EVP_PKEY_free(key);
    return NULL;
}

// Key and certificate making (development CA).
static inline EVP_PKEY *aasa_EVP_EC_gen_p256(void) { return EVP_EC_gen("P-256"); }
static inline long aasa_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline long aasa_BIO_flush(BIO *b) { return BIO_flush(b); }
static inline long aasa_BIO_set_write_buffer_size(BIO *b, long size) { return BIO_set_write_buffer_size(b, size); }
static inline int aasa_BIO_should_retry(BIO *b) { return BIO_should_retry(b); }
static inline void aasa_X509V3_set_ctx_nodb(X509V3_CTX *ctx) { X509V3_set_ctx_nodb(ctx); }
static inline int aasa_mbstring_asc(void) { return MBSTRING_ASC; }

static inline int aasa_ERR_GET_REASON(unsigned long e) { return ERR_GET_REASON(e); }

// Client side (aasa check, ACME): SNI, and the client's modes.
static inline long aasa_SSL_set_tlsext_host_name(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }
static inline long aasa_client_modes(void) { return SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER; }
// No SSL_OP_IGNORE_UNEXPECTED_EOF here: a client must tell close_notify from a cut connection,
// since a body delimited by the close is complete only with close_notify (RFC 8446 §6.1).
static inline uint64_t aasa_client_options(void) { return SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION; }

#endif
