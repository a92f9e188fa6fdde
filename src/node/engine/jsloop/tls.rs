//! TLS for the JS-thread engine: rustls is sans-I/O, so transport.rs
//! drives it from readiness events (`read_tls` / `process_new_packets` /
//! `write_tls`, as in rustls's `tlsclient-mio` example). Here: the client
//! configuration from an endpoint's [`TlsSettings`], with the tokio
//! engine's semantics (web PKI roots unless a CA is given, optional client
//! certificate, `rejectUnauthorized: false` turns verification off).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::transport::endpoint::TlsSettings;

/// A client connection to `host` with `settings`.
pub(crate) fn connect(settings: &TlsSettings, host: &str) -> Result<ClientConnection, String> {
    let config = client_config(settings)?;
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| format!("invalid TLS server name {host:?}: {e}"))?;
    ClientConnection::new(config, name).map_err(|e| format!("TLS setup failed: {e}"))
}

fn client_config(settings: &TlsSettings) -> Result<Arc<ClientConfig>, String> {
    crate::transport::connection::install_crypto_provider();
    let mut roots = RootCertStore::empty();
    match &settings.ca {
        Some(pem) => {
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|e| format!("invalid TLS CA certificate: {e}"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("invalid TLS CA certificate: {e}"))?;
            }
            if roots.is_empty() {
                return Err("the TLS CA bundle holds no certificate".into());
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let builder = ClientConfig::builder().with_root_certificates(roots);
    let mut config = match (&settings.cert, &settings.key) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("invalid TLS client certificate: {e}"))?;
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
                .map_err(|e| format!("invalid TLS client key: {e}"))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("invalid TLS client certificate or key: {e}"))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("TLS client certificate and key must be given together".into()),
    };
    if !settings.reject_unauthorized {
        let provider = rustls::crypto::CryptoProvider::get_default()
            .ok_or("no TLS crypto provider installed")?;
        config
            .dangerous()
            .set_certificate_verifier(Arc::new(AcceptAnyCertificate {
                schemes: provider
                    .signature_verification_algorithms
                    .supported_schemes(),
            }));
    }
    Ok(Arc::new(config))
}

/// `rejectUnauthorized: false`: any certificate is accepted (the user's
/// explicit opt-out, as with Node's `tls`). Signatures are not checked
/// either: without a trusted certificate they prove nothing.
#[derive(Debug)]
struct AcceptAnyCertificate {
    schemes: Vec<SignatureScheme>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.schemes.clone()
    }
}
