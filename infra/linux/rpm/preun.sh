# sef .rpm %preun ($1 = 0 erase, 1 upgrade): erase stops and disables the service; data in /var/lib/sef stays.
if [ "$1" -eq 0 ] && [ -d /run/systemd/system ]; then
  systemctl stop sef.service || true
  systemctl disable sef.service || true
fi
exit 0
