# sef .rpm %pre: the system user exists before files owned by its group are installed.
if ! getent passwd sef >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /sbin/nologin sef
fi
exit 0
