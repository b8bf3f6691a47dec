# sef .rpm %postun: reload units after erase (rpm keeps /var/lib/sef and a changed /etc/sef/config.json as .rpmsave).
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
exit 0
