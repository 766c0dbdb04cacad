# tries: reach the host's loopback server from bash's /dev/tcp
# expect: contained
if bash -c 'exec 3<>/dev/tcp/127.0.0.1/@PORT@ && printf "GET /ESCAPED HTTP/1.0\r\n\r\n" >&3' 2>/dev/null; then
    echo ESCAPED connected
else
    echo "contained: no route to the host"
fi
