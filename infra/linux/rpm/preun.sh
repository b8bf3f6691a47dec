# sef .rpm %preun ($1 = 0 erase, 1 upgrade): erase disables the service (with or without systemd running) and stops
# it; data in /var/lib/sef stays.
if [ "$1" -eq 0 ]; then
  systemctl --no-reload disable sef.service || true
  if [ -d /run/systemd/system ]; then
    systemctl stop sef.service || true
  fi
fi
exit 0
