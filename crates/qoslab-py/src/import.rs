//! Bindings for `qoslab import tc|cisco` (`qoslab-import`): configuration
//! text in; the scenario policy TOML, the spec as plain dicts and the
//! warnings out. A text that cannot be imported raises
//! `qoslab.ConfigImportError` (a `ValueError`; `.line`, `.column`,
//! `.token`, `.message`).

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use qoslab_import::{mqc, render, Direction, ImportError};
use qoslab_policy::spec::{ClassSpec, FifoLimit, MeterSpec, PolicySpec, QdiscSpec};

create_exception!(
    qoslab,
    ConfigImportError,
    crate::errors::QoslabValueError,
    "A tc or MQC configuration cannot be imported; `.line`, `.column`, `.token`, `.message` say where and why."
);

fn err(py: Python<'_>, e: ImportError) -> PyErr {
    let x = ConfigImportError::new_err(e.to_string());
    let v = x.value(py);
    let _ = v.setattr("line", e.line);
    let _ = v.setattr("column", e.column);
    let _ = v.setattr("token", e.token);
    let _ = v.setattr("message", e.message);
    x
}

fn params<'py>(py: Python<'py>, p: &[(String, String)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in p {
        d.set_item(k, v)?;
    }
    Ok(d)
}

fn meter<'py>(py: Python<'py>, m: &MeterSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", &m.kind)?;
    d.set_item("params", params(py, &m.params)?)?;
    Ok(d)
}

fn class<'py>(py: Python<'py>, c: &ClassSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", &c.id)?;
    d.set_item("parent", &c.parent)?;
    d.set_item("params", params(py, &c.params)?)?;
    d.set_item(
        "police",
        c.police.as_ref().map(|m| meter(py, m)).transpose()?,
    )?;
    d.set_item("qdisc", c.qdisc.as_ref().map(|q| qdisc(py, q)).transpose()?)?;
    Ok(d)
}

fn qdisc<'py>(py: Python<'py>, q: &QdiscSpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", &q.kind)?;
    d.set_item("params", params(py, &q.params)?)?;
    let cs = PyList::empty(py);
    for c in &q.classes {
        cs.append(class(py, c)?)?;
    }
    d.set_item("classes", cs)?;
    let fs = PyList::empty(py);
    for f in &q.filters {
        let x = PyDict::new(py);
        x.set_item("match", &f.classifier)?;
        x.set_item("class", &f.class)?;
        fs.append(x)?;
    }
    d.set_item("filters", fs)?;
    d.set_item("child", q.child.as_ref().map(|c| qdisc(py, c)).transpose()?)?;
    Ok(d)
}

fn spec<'py>(py: Python<'py>, s: &PolicySpec) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match s {
        PolicySpec::Police(m) => {
            d.set_item("form", "police")?;
            d.set_item("police", meter(py, m)?)?;
        }
        PolicySpec::Shape(x) => {
            d.set_item("form", "shape")?;
            d.set_item("kind", &x.kind)?;
            d.set_item("params", params(py, &x.params)?)?;
        }
        PolicySpec::Fifo(f) => {
            d.set_item("form", "fifo")?;
            match f.limit {
                FifoLimit::Packets(n) => d.set_item("limit", format!("{n}p"))?,
                FifoLimit::Bytes(b) => d.set_item("limit", format!("{b}B"))?,
            }
            d.set_item("head_drop", f.head_drop)?;
        }
        PolicySpec::Tree(t) => {
            d.set_item("form", "tree")?;
            d.set_item(
                "police",
                t.police.as_ref().map(|m| meter(py, m)).transpose()?,
            )?;
            d.set_item("root", qdisc(py, &t.root)?)?;
        }
        PolicySpec::Sized { stab, inner } => {
            // The inner policy's description plus its size table (tc-stab).
            let d = spec(py, inner)?;
            let st = PyDict::new(py);
            st.set_item("overhead_bytes", stab.overhead_bytes)?;
            let linklayer = match stab.linklayer {
                qoslab_policy::stab::LinkLayer::Ethernet => "ethernet",
                qoslab_policy::stab::LinkLayer::Atm => "atm",
            };
            st.set_item("linklayer", linklayer)?;
            st.set_item("mpu_bytes", stab.mpu_bytes)?;
            st.set_item("mtu_bytes", stab.mtu_bytes)?;
            st.set_item("tsize", stab.tsize)?;
            d.set_item("stab", st)?;
            return Ok(d);
        }
    }
    Ok(d)
}

/// Imports `text` (`source` = "tc" or "cisco"); returns a dict with the
/// TOML of the selected policy under `[policy.LINK.DIRECTION]`, its spec,
/// the derived values, the warnings and every policy found.
#[pyfunction]
#[pyo3(signature = (source, text, direction="egress", attach=None, platform="ios-xe", table=None))]
pub fn import_config<'py>(
    py: Python<'py>,
    source: &str,
    text: &str,
    direction: &str,
    attach: Option<&str>,
    platform: &str,
    table: Option<&str>,
) -> PyResult<Bound<'py, PyDict>> {
    let dir = match direction {
        "egress" => Direction::Egress,
        "ingress" => Direction::Ingress,
        _ => {
            return Err(PyValueError::new_err(
                "direction: expected egress or ingress",
            ))
        }
    };
    let imported = match source {
        "tc" => qoslab_import::tc::import(text),
        "cisco" | "mqc" => {
            let p = mqc::Platform::parse(platform)
                .ok_or_else(|| PyValueError::new_err("platform: expected ios or ios-xe"))?;
            mqc::import(text, p)
        }
        _ => return Err(PyValueError::new_err("source: expected tc or cisco")),
    }
    .map_err(|e| err(py, e))?;
    let one = imported.select(dir, attach).map_err(|e| err(py, e))?;
    let table = table.map(str::to_string).unwrap_or_else(|| match dir {
        Direction::Egress => "policy.bottleneck.egress".into(),
        Direction::Ingress => "policy.access.ingress".into(),
    });
    let from = if source == "tc" {
        "tc".to_string()
    } else {
        format!("cisco --platform {platform}")
    };
    let d = PyDict::new(py);
    d.set_item(
        "toml",
        render::render(one, &imported.warnings, &from, &table),
    )?;
    d.set_item("attach", &one.attach)?;
    d.set_item("direction", direction)?;
    d.set_item("spec", spec(py, &one.spec)?)?;
    let (derived, tree_warnings, build_error) = match render::derived(&one.spec) {
        Ok((d, w)) => (d, w, None),
        Err(e) => (Vec::new(), Vec::new(), Some(e)),
    };
    let dv = PyList::empty(py);
    for (k, v) in derived {
        dv.append((k, v))?;
    }
    d.set_item("derived", dv)?;
    d.set_item("build_error", build_error)?;
    let w = PyList::empty(py);
    for x in &imported.warnings {
        w.append(x.to_string())?;
    }
    for x in tree_warnings {
        w.append(x)?;
    }
    d.set_item("warnings", w)?;
    d.set_item("source_lines", one.source.clone())?;
    let all = PyList::empty(py);
    for p in &imported.policies {
        all.append((p.attach.clone(), p.direction.name()))?;
    }
    d.set_item("policies", all)?;
    Ok(d)
}
