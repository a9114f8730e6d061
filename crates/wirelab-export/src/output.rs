//! Where an export goes: a new file, or stdout; never over one of its
//! inputs, and binary Parquet never onto a terminal.

use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Buffer of an export's output.
const BUFFER: usize = 1 << 20;

#[derive(Debug, Error)]
pub enum OutputError {
    #[error("cannot create {path}", path = path.display())]
    Create {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("Parquet is binary: write it to a file with -o FILE (or redirect stdout)")]
    BinaryToTerminal,
    #[error("-o is the input file: give another output file")]
    IsTheInput,
    #[error("-o {path} is one of the inputs: give another output file", path = path.display())]
    IsAnInput { path: PathBuf },
}

/// A buffered writer on `path` (created or truncated), or on stdout when
/// there is none; `binary` output is refused on a terminal.
pub fn open(path: Option<&Path>, binary: bool) -> Result<Box<dyn Write + Send>, OutputError> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::with_capacity(BUFFER, create(p)?)),
        None if binary && io::stdout().is_terminal() => return Err(OutputError::BinaryToTerminal),
        None => Box::new(BufWriter::with_capacity(BUFFER, io::stdout())),
    })
}

/// Creates (or truncates) `path`.
pub fn create(path: &Path) -> Result<File, OutputError> {
    File::create(path).map_err(|source| OutputError::Create {
        path: path.to_path_buf(),
        source,
    })
}

/// Refuses an output that is one of `inputs` (the export would truncate
/// what it reads).
pub fn check_not_input(output: Option<&Path>, inputs: &[&Path]) -> Result<(), OutputError> {
    let Some(o) = output else { return Ok(()) };
    match inputs {
        [one] if same_file(one, o) => Err(OutputError::IsTheInput),
        _ if inputs.len() > 1 && inputs.iter().any(|i| same_file(i, o)) => {
            Err(OutputError::IsAnInput {
                path: o.to_path_buf(),
            })
        }
        _ => Ok(()),
    }
}

/// Whether two paths name one existing file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_over_an_input_is_refused() {
        let dir = std::env::temp_dir().join(format!("wl-export-out-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a.wlr"), dir.join("b.wlr"));
        std::fs::write(&a, b"x").unwrap();
        std::fs::write(&b, b"y").unwrap();
        let other = dir.join("out.csv");
        let via_dot = dir.join(".").join("a.wlr");
        assert!(matches!(
            check_not_input(Some(&via_dot), &[&a]),
            Err(OutputError::IsTheInput)
        ));
        let e = check_not_input(Some(&b), &[&a, &b]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "-o {} is one of the inputs: give another output file",
                b.display()
            )
        );
        assert!(check_not_input(Some(&other), &[&a, &b]).is_ok());
        assert!(check_not_input(None, &[&a]).is_ok());
        let e = open(Some(&dir.join("no/such/dir/x.parquet")), true)
            .err()
            .unwrap();
        assert!(e.to_string().starts_with("cannot create "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
